"""The HTTP API: a WSGI application (Flask) behind keystonemiddleware's auth_token, with
oslo.policy rules, that calls app/ only. It reads from the store and records every change
that touches the cloud as a job for the daemon holding the lease (docs/api.rst)."""
