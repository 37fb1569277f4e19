"""Set up a fresh Keystone as an operator sets it up for consolidator's API, through its
own API (openstacksdk, as the bootstrap admin with a system-scoped token): the operations
team's project and users with their roles, keystonemiddleware's service user, and the
consolidation service in the catalog. Also the clouds.yaml that logs in as each user."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from consolidator.emulators.fake.keystone import PERSONAS, User
from consolidator.emulators.realkeystone.deploy import BOOTSTRAP_PASSWORD, REGION

#: The operations team's project; the personas (the fake Keystone's users: reader, operator,
#: cloud-admin, with the roles reader, member and admin) have their role on it.
PROJECT = "ops"
#: keystonemiddleware's own credentials: a user with the service role on project service,
#: which Keystone lets validate anyone's token.
SERVICE_USER = User("consolidator", "consolidator-secret", "service")
SERVICE_PROJECT = "service"
#: The catalog entry of consolidator's API (openstack service create --type consolidation).
API_TYPE = "consolidation"
API_NAME = "consolidator"
#: Prefix of the clouds.yaml entries: ks-reader, ks-operator, ks-admin (and ks-service).
CLOUD_PREFIX = "ks"


@dataclass(frozen=True)
class Provisioned:
    """What provision() created."""

    project_id: str
    user_ids: dict[str, str]          # persona (reader, operator, admin, service) -> id
    api_service_id: str


def admin_connection(auth_url: str) -> Any:
    """openstacksdk as the bootstrap admin, system-scoped (Keystone's new defaults want a
    system admin to create users, projects and services)."""
    import openstack

    return openstack.connect(
        load_yaml_config=False, load_envvars=False, region_name=REGION,
        auth={"auth_url": auth_url, "username": "admin", "password": BOOTSTRAP_PASSWORD,
              "user_domain_name": "Default", "system_scope": "all"})


def provision(auth_url: str, api_url: str) -> Provisioned:
    """Create the project, the users with their role assignments, the service user, and
    the consolidation service with public, internal and admin endpoints at api_url."""
    conn = admin_connection(auth_url)
    identity = conn.identity
    project = identity.create_project(name=PROJECT, domain_id="default",
                                      description="the operations team")
    service_project = identity.create_project(name=SERVICE_PROJECT, domain_id="default")
    roles = {role.name: role for role in identity.roles()}   # bootstrap's
    ids = {}
    for persona, user in [*PERSONAS.items(), ("service", SERVICE_USER)]:
        on = service_project if persona == "service" else project
        created = identity.create_user(name=user.name, password=user.password,
                                       domain_id="default", default_project_id=on.id)
        identity.assign_project_role_to_user(on, created, roles[user.role])
        ids[persona] = created.id
    service = identity.create_service(name=API_NAME, type=API_TYPE,
                                      description="consolidator's API", is_enabled=True)
    for interface in ("public", "internal", "admin"):
        identity.create_endpoint(service_id=service.id, interface=interface, url=api_url,
                                 region_id=REGION)
    return Provisioned(project.id, ids, service.id)


def set_api_url(auth_url: str, api_url: str) -> None:
    """Point the consolidation service's three endpoints at api_url."""
    conn = admin_connection(auth_url)
    service = conn.identity.find_service(API_NAME, ignore_missing=False)
    for endpoint in conn.identity.endpoints(service_id=service.id):
        conn.identity.update_endpoint(endpoint, url=api_url)


def cloud_entry(auth_url: str, user: User, project: str) -> dict[str, Any]:
    """A clouds.yaml entry logging in as user, scoped to project."""
    return {"auth": {"auth_url": auth_url, "username": user.name, "password": user.password,
                     "project_name": project, "user_domain_name": "Default",
                     "project_domain_name": "Default"},
            "region_name": REGION, "identity_api_version": 3, "interface": "public"}


def clouds(auth_url: str) -> dict[str, dict[str, Any]]:
    """ks-reader, ks-operator, ks-admin (project ops) and ks-service (project service)."""
    entries = {f"{CLOUD_PREFIX}-{persona}": cloud_entry(auth_url, user, PROJECT)
               for persona, user in PERSONAS.items()}
    entries[f"{CLOUD_PREFIX}-service"] = cloud_entry(auth_url, SERVICE_USER, SERVICE_PROJECT)
    return entries
