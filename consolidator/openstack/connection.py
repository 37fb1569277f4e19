"""The openstacksdk edge: connecting, microversions, raw JSON reads with retries and paging,
and error translation.

Everything that talks to OpenStack goes through here, so that openstacksdk and keystoneauth
exceptions become CloudError with one line naming the cloud and the cause.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

import tenacity

from consolidator.core.errors import CloudError

if TYPE_CHECKING:   # openstacksdk is imported by the calls that use it: --help stays fast
    from openstack.connection import Connection

LOG = logging.getLogger(__name__)
T = TypeVar("T")

#: The newest compute microversion whose responses this project understands.
NOVA_MAX_MICROVERSION = (2, 96)

#: HTTP statuses worth retrying on reads (idempotent requests only).
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


class TransientCloudError(CloudError):
    """A read that failed in a way worth retrying (connection, 5xx, 429, one 401)."""


class HttpStatusError(CloudError):
    """A request answered with an HTTP error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


#: What a cloud-selection error adds: where the cloud's name and entry come from.
SELECTION_HINT = "(check clouds.yaml, OS_CLIENT_CONFIG_FILE or --cloud)"


#: How long to wait for any one answer from the cloud (seconds) when its clouds.yaml entry
#: sets no ``api_timeout`` of its own; without one a Keystone that accepts connections but
#: never answers would hang the command, and the daemon, forever.
DEFAULT_API_TIMEOUT_S = 60


def connect(cloud: str | None, **overrides: Any) -> Connection:
    """An openstacksdk Connection to a clouds.yaml cloud (or OS_* variables when cloud is None).

    The clouds.yaml openstacksdk would read is checked first (openstacksdk skips a file that
    is not YAML without a word, and crashes on wrong types); an entry without api_timeout
    gets DEFAULT_API_TIMEOUT_S. openstacksdk connects lazily: credentials are first used by
    the first request.
    """
    import openstack.config
    import openstack.connection
    from keystoneauth1 import exceptions as ks_exc
    from openstack import exceptions as sdk_exc

    named = os.environ.get("OS_CLIENT_CONFIG_FILE")
    if named and not Path(named).is_file():   # openstacksdk would silently look elsewhere
        raise CloudError(f"OS_CLIENT_CONFIG_FILE={named}: no such file (point it at your "
                         f"clouds.yaml, or unset it)")
    if overrides.get("load_yaml_config", True):
        doc = check_clouds_yaml()
        if cloud is None:
            _refuse_an_unnamed_choice(doc)
    try:
        region = openstack.config.get_cloud_region(cloud=cloud, **overrides)
    except (sdk_exc.ConfigException, ks_exc.MissingRequiredOptions,
            ks_exc.MissingAuthPlugin) as exc:
        if cloud is None and isinstance(exc, ks_exc.MissingRequiredOptions):
            raise CloudError(no_cloud_named()) from None
        raise CloudError(f"cloud {cloud or '(default)'!r}: {_first_line(exc)} "
                         f"{SELECTION_HINT}") from None
    except ks_exc.ClientException as exc:
        raise CloudError(f"cloud {cloud or '(default)'!r}: {_first_line(exc)}") from None
    entry: dict[str, Any] = region.config   # the clouds.yaml entry, as openstacksdk read it
    if entry.get("api_timeout") is None:
        entry["api_timeout"] = DEFAULT_API_TIMEOUT_S
    return openstack.connection.Connection(config=region)


def no_cloud_named() -> str:
    """The one line for a command that needs a cloud when none is named or configured:
    where clouds.yaml is looked for, how to name a cloud, and the demo's fake cloud."""
    path = clouds_yaml_path()
    if path is None:
        return ("no cloud is configured: no clouds.yaml (OS_CLIENT_CONFIG_FILE, "
                "./clouds.yaml, ~/.config/openstack/, /etc/openstack/) and no OS_AUTH_URL: "
                "write a clouds.yaml entry and name it with --cloud NAME or OS_CLOUD=NAME "
                "(README: Quick start), or try 'consolidator demo' on a fake cloud")
    return (f"no cloud is named and {path} has no single cloud to use: name one with "
            f"--cloud NAME or OS_CLOUD=NAME")


def clouds_yaml_path() -> Path | None:
    """The clouds.yaml openstacksdk reads: OS_CLIENT_CONFIG_FILE, else the first that exists
    of ./clouds.yaml, ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml, ..."""
    from openstack.config import loader

    named = os.environ.get("OS_CLIENT_CONFIG_FILE")
    for candidate in ([named] if named else []) + list(loader.CONFIG_FILES):
        if os.path.isfile(candidate):
            return Path(candidate)
    return None


#: OS_* variables that select a cloud or a file rather than describe a cloud (any other makes
#: openstacksdk build a cloud from the environment, its default then).
_SELECTING = frozenset({"OS_CLOUD", "OS_CLIENT_CONFIG_FILE", "OS_CLIENT_SECURE_FILE"})


def _refuse_an_unnamed_choice(found: tuple[Path, Any] | None) -> None:
    """CloudError, one line naming the clouds, when no cloud is named (no --cloud, no
    OS_CLOUD, no cloud in OS_* variables) and the clouds.yaml in use defines several:
    openstacksdk would fall back to an empty cloud and complain about a missing auth_url."""
    if found is None or os.environ.get("OS_CLOUD") or \
            any(k.startswith("OS_") and k not in _SELECTING for k in os.environ):
        return
    path, doc = found
    clouds = doc.get("clouds") if isinstance(doc, dict) else None
    names = list(clouds) if isinstance(clouds, dict) else []
    if len(names) > 1:
        raise CloudError(f"clouds.yaml {path} defines {len(names)} clouds "
                         f"({', '.join(names)}) and none is named: pass --cloud NAME or set "
                         f"OS_CLOUD")


def check_clouds_yaml(path: Path | None = None) -> tuple[Path, Any] | None:
    """Raise CloudError, one line naming the file, the problem and the fix, if the clouds.yaml
    in use is not YAML or has a value of the wrong type where openstacksdk expects one;
    return its path and parsed content (None when there is none)."""
    import yaml

    path = path or clouds_yaml_path()
    if path is None:
        return None
    fix = "fix the file, or point OS_CLIENT_CONFIG_FILE at another"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CloudError(f"clouds.yaml {path}: cannot be read ({exc.strerror}): {fix}") from None
    except UnicodeDecodeError:
        raise CloudError(f"clouds.yaml {path}: not UTF-8 text: save it as UTF-8") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise CloudError(f"{path}: {at}not valid YAML ({problem}): {fix}") from None
    problem = _clouds_yaml_problem(doc)
    if problem:
        raise CloudError(f"clouds.yaml {path}: {problem}: {fix}")
    return path, doc


def _clouds_yaml_problem(doc: Any) -> str | None:
    """What is wrong with a parsed clouds.yaml, in a few words; None if nothing we check."""
    if not isinstance(doc, dict):
        return "the top level must be a mapping with a 'clouds' key"
    clouds = doc.get("clouds", {})
    if not isinstance(clouds, dict):
        return "'clouds' must be a mapping of cloud names to their entries"
    for name, cloud in clouds.items():
        if not isinstance(cloud, dict):
            return f"cloud {name!r} must be a mapping"
        if not isinstance(cloud.get("auth", {}), dict):
            return f"cloud {name!r}: 'auth' must be a mapping"
        timeout = cloud.get("api_timeout")
        if timeout is not None and (isinstance(timeout, bool)
                                    or not isinstance(timeout, (int, float)) or timeout <= 0):
            return f"cloud {name!r}: 'api_timeout' must be a number of seconds above 0"
    return None


_URL = re.compile(r"https?://\S+?(?=:\s|\s|$)")
_CAUSE = re.compile(r"\[Errno -?\d+\] ([^\"')]+)|(timed out|Name or service not known)")


def connect_cause(exc: BaseException) -> str:
    """'connection refused', 'timed out', ...: why a connection failed, in a few words."""
    cause = _CAUSE.search(str(exc))
    return (cause.group(1) or cause.group(2)).strip().lower() if cause else "no answer"


def unreachable(label: str, exc: BaseException, conn: Connection | None = None) -> str:
    """One short line for a cloud that does not answer: the URL, the cause, what to check;
    for one that accepted the connection and then said nothing, the api_timeout it hit."""
    url = _URL.search(str(exc))
    where = url.group(0)[:80] if url else "its auth URL"
    cause = connect_cause(exc)
    if cause == "timed out" and conn is not None and "connect timeout" not in str(exc):
        entry: dict[str, Any] = conn.config.config   # the clouds.yaml entry in use
        timeout = entry.get("api_timeout") or DEFAULT_API_TIMEOUT_S
        return (f"cloud {label!r}: {where} did not answer within {float(timeout):g} s: check "
                f"that it is up, or raise api_timeout in the clouds.yaml entry {label!r} "
                f"(default {DEFAULT_API_TIMEOUT_S} s)")
    return (f"cloud {label!r}: cannot connect to {where} ({cause}): check "
            f"auth_url in the clouds.yaml entry {label!r}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def cloud_label(conn: Connection) -> str:
    """The cloud's name for messages."""
    return getattr(conn.config, "name", None) or "default"


def cloud_identity(conn: Connection) -> str | None:
    """Which deployment a connection reaches, whatever its clouds.yaml entry is called: its
    Keystone URL and region, or (a cloud without Keystone) its compute endpoint."""
    config = conn.config
    where = (config.get_auth_args() or {}).get("auth_url") or config.get_endpoint("compute")
    if not where:
        return None
    region = getattr(config, "region_name", None) or ""
    return f"{str(where).rstrip('/')} {region}".strip()


@contextmanager
def cloud_errors(conn: Connection, doing: str) -> Iterator[None]:
    """Translate openstacksdk/keystoneauth exceptions into CloudError naming cloud and cause."""
    from keystoneauth1 import exceptions as ks_exc
    from openstack import exceptions as sdk_exc

    label = cloud_label(conn)
    try:
        yield
    except TransientCloudError as exc:
        raise CloudError(f"cloud {label!r}: {doing} failed after retries: {exc}") from None
    except HttpStatusError as exc:
        raise CloudError(f"cloud {label!r}: {doing} failed: {exc}") from None
    except CloudError:
        raise
    except (ks_exc.MissingRequiredOptions, ks_exc.MissingAuthPlugin) as exc:
        raise CloudError(f"cloud {label!r}: {_first_line(exc)} {SELECTION_HINT}") from None
    except ks_exc.Unauthorized:
        raise CloudError(f"cloud {label!r}: authentication failed while {doing}: "
                         f"check the username, password and project in clouds.yaml") from None
    except (ks_exc.ConnectFailure, ks_exc.ConnectionError) as exc:
        raise CloudError(unreachable(label, exc, conn)) from None
    except ks_exc.DiscoveryFailure as exc:
        if _CAUSE.search(str(exc)):   # discovery failed for want of a connection
            raise CloudError(unreachable(label, exc, conn)) from None
        raise CloudError(f"cloud {label!r}: cannot reach or discover the auth URL while "
                         f"{doing}: {_first_line(exc)}") from None
    except ks_exc.EndpointNotFound as exc:
        raise CloudError(f"cloud {label!r}: no endpoint while {doing}: "
                         f"{_first_line(exc)}") from None
    except sdk_exc.SDKException as exc:
        raise CloudError(f"cloud {label!r}: {doing} failed: {_first_line(exc)}") from None
    except ks_exc.ClientException as exc:
        raise CloudError(f"cloud {label!r}: {doing} failed: {_first_line(exc)}") from None


def _retrying(attempts: int, max_wait: float) -> tenacity.Retrying:
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(TransientCloudError),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=0.25, max=max_wait),
        before_sleep=lambda state: LOG.warning(
            "retrying after %s (attempt %d of %d)",
            state.outcome.exception() if state.outcome else None,
            state.attempt_number, attempts),
        reraise=True,
    )


def get_json(proxy: Any, url: str, *, microversion: str | None = None,
             attempts: int = 4, max_wait: float = 4.0) -> Any:
    """GET url through an openstacksdk proxy's session and return the decoded JSON.

    Connection errors, 429, 5xx and one 401 are retried with exponential backoff; other
    4xx fail at once. Auth, catalog and microversion negotiation stay openstacksdk's.
    """
    from keystoneauth1 import exceptions as ks_exc

    seen_401 = [False]

    def once() -> Any:
        try:
            response = proxy.get(url, microversion=microversion)
        except (ks_exc.ConnectFailure, ks_exc.ConnectionError) as exc:
            raise TransientCloudError(f"GET {url}: {connect_cause(exc)}") from None
        status = response.status_code
        if status == 401 and not seen_401[0]:
            seen_401[0] = True
            raise TransientCloudError(f"GET {url}: 401 (token revoked?)")
        if status in RETRYABLE_STATUSES:
            raise TransientCloudError(f"GET {url}: HTTP {status} {error_text(response)}")
        if status >= 400:
            raise HttpStatusError(f"GET {url}: HTTP {status} {error_text(response)}", status)
        try:
            return response.json()
        except ValueError:
            raise CloudError(f"GET {url}: the answer is not JSON") from None

    return call_with_retries(once, attempts=attempts, max_wait=max_wait)


def call_with_retries(func: Callable[[], T], *, attempts: int = 4, max_wait: float = 4.0) -> T:
    """Call func, retrying TransientCloudError with exponential backoff."""
    return _retrying(attempts, max_wait)(func)


def error_text(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return (response.text or "").strip().splitlines()[0][:200] if response.text else ""
    if isinstance(body, dict) and len(body) == 1:
        inner = next(iter(body.values()))
        if isinstance(inner, dict) and "message" in inner:
            return str(inner["message"])
    if isinstance(body, dict) and "errors" in body and body["errors"]:
        return str(body["errors"][0].get("detail") or body["errors"][0].get("title"))
    return ""


def has_endpoint(conn: Connection, service: str) -> bool:
    """Whether a service (e.g. 'placement') is in the catalog and enabled."""
    from keystoneauth1 import exceptions as ks_exc
    from openstack import exceptions as sdk_exc

    try:
        return bool(getattr(conn, service).get_endpoint())
    except (ks_exc.EndpointNotFound, ks_exc.CatalogException, sdk_exc.ServiceDisabledException):
        return False


def mv_string(version: tuple[int, int] | None) -> str | None:
    """'2.96' for (2, 96); None for None."""
    from keystoneauth1 import discover

    return discover.version_to_string(version) if version else None


def compute_microversion(conn: Connection) -> tuple[int, int] | None:
    """The highest compute microversion both the cloud and this module understand."""
    from keystoneauth1 import discover

    data = conn.compute.get_endpoint_data()
    if data is None or not data.max_microversion:
        return None
    cloud_max = tuple(discover.normalize_version_number(data.max_microversion))[:2]
    return min(cloud_max, NOVA_MAX_MICROVERSION)  # type: ignore[return-value]


def paged(proxy: Any, path: str, key: str, *, microversion: str | None, limit: int | None,
          params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every item of a Nova list, following `<key>_links` next hrefs (marker as a fallback)."""
    query = dict(params or {})
    if limit:
        query["limit"] = limit
    url: str | None = f"{path}?{urlencode(query)}" if query else path
    seen: set[str] = set()
    while url and url not in seen:
        seen.add(url)
        body = get_json(proxy, url, microversion=microversion)
        items = body.get(key) or []
        yield from items
        links = body.get(f"{key}_links") or []
        url = next((link["href"] for link in links if link.get("rel") == "next"), None)
        if url is None and limit and len(items) >= limit and "id" in items[-1]:
            url = f"{path}?{urlencode({**query, 'marker': items[-1]['id']})}"


def offset_paged(conn: Connection, path: str, key: str, mv: str | None,
                  params: dict[str, Any], limit: int = 1000) -> Iterator[dict[str, Any]]:
    """Every item of a Nova list that pages by limit and offset (server groups)."""
    offset = 0
    while True:
        query = urlencode({**params, "limit": limit, "offset": offset})
        items = get_json(conn.compute, f"{path}?{query}", microversion=mv).get(key) or []
        yield from items
        if len(items) < limit:
            return
        offset += len(items)
