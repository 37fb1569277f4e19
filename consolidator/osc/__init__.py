"""The `openstack consolidation ...` commands: a python-openstackclient plugin that talks to the
consolidator API through the keystoneauth1 session OSC gives (osc-lib and cliff, the [osc]
extra). Like cli/, it is a front end; it imports no other layer of the package but osc/."""
