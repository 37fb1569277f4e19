"""The plugin module OSC loads through the `openstack.cli.extension` entry point
(``consolidation = consolidator.osc.plugin``): the API's name, its version option, and the
client factory. The commands live in the `openstack.consolidation.v1` entry point group."""

from __future__ import annotations

import argparse
import re
from typing import Any

from keystoneauth1 import exceptions as ks_exceptions
from osc_lib import exceptions, utils

from consolidator.osc.http import ConsolidationClient

API_NAME = "consolidation"
API_VERSION_OPTION = "os_consolidation_api_version"
#: The major versions; a microversion 1.N is checked by check_api_version.
API_VERSIONS = ("1",)
DEFAULT_API_VERSION = "1"
SERVICE_TYPE = "consolidation"
_VERSION = re.compile(r"^1(\.(\d+|latest))?$")


def check_api_version(version: str) -> bool:
    """Accept 1, 1.N and 1.latest (OSC then skips its own check against API_VERSIONS)."""
    if not _VERSION.match(str(version)):
        raise exceptions.CommandError(
            f"--os-consolidation-api-version {version}: not a version of the consolidation "
            "API; give 1 or a microversion 1.N")
    return True


def microversion(version: str) -> str | None:
    """The microversion to send in OpenStack-API-Version, or None for the server's minimum."""
    return None if version == "1" else version


def make_client(instance: Any) -> ConsolidationClient:
    """The client, on OSC's session, for the endpoint the catalog lists under the service type
    `consolidation` (or the cloud's consolidation_endpoint_override)."""
    try:
        endpoint = instance.get_endpoint_for_service_type(
            SERVICE_TYPE, region_name=instance.region_name, interface=instance.interface)
    except ks_exceptions.EndpointNotFound:
        endpoint = None
    if not endpoint:
        raise exceptions.CommandError(
            "no consolidation endpoint in the service catalog: register it with "
            "'openstack service create --type consolidation' and an endpoint, or set "
            "consolidation_endpoint_override in clouds.yaml")
    return ConsolidationClient(instance.session, endpoint,
                               microversion(instance._api_version[API_NAME]))


def build_option_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add --os-consolidation-api-version to the openstack command's global options."""
    parser.add_argument(
        "--os-consolidation-api-version", metavar="<consolidation-api-version>",
        default=utils.env("OS_CONSOLIDATION_API_VERSION", default=DEFAULT_API_VERSION),
        help="Consolidation API version: 1, or a microversion 1.N "
             f"(Env: OS_CONSOLIDATION_API_VERSION, default {DEFAULT_API_VERSION})")
    return parser
