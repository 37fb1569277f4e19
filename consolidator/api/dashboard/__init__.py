"""The dashboard: web pages served by the API process under /dashboard.

It signs a person in through Keystone (username and password; the server asks the Keystone
the API validates against), keeps the token in an encrypted session cookie, and reads and
changes everything through the API itself, in process and with that token, so that the
API's policy and conventions hold for the pages exactly as for `openstack consolidation`.
Every script and style ships in the wheel (static/); the pages work without scripts but
for the live job, which polls."""
