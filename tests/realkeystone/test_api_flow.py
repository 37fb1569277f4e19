"""The operator's whole flow through the API with the real Keystone: the API validates the
real tokens of the three personas with the service user an operator creates; the fake cloud
serves Nova, Placement and the BMCs; a daemon process carries the jobs out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.functional.test_api_flow import flow_bed, walk_the_flow
from tests.realkeystone.served import RealKeystone

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*", "ignore:::keystonemiddleware.*",
                                        "ignore:::oslo_config.*", "ignore:::oslo_policy.*",
                                        "ignore:::webob.*")


def test_the_operators_flow_with_the_real_keystone(real_keystone: RealKeystone,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def serve_api(config: Path, db_url: str) -> tuple[str, Callable[[], None]]:
        from consolidator.api.dev_server import serve_in_thread
        from consolidator.api.wsgi import make_app
        from consolidator.app.context import AppContext

        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(tmp_path / "clouds.yaml"))
        ctx = AppContext(config_file=str(config), db_url=db_url, cloud="fake")
        return serve_in_thread(make_app(ctx, service_auth=real_keystone.auth_token_options()))

    with flow_bed(tmp_path, with_api=False, serve_api=serve_api,
                  tokens=real_keystone.token) as served:
        walk_the_flow(served)
