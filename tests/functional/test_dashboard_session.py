"""The dashboard's sign-in and session, over HTTP against the API process and the fake
Keystone: the cookie's flags, CSRF, forged and missing sessions, refused sign-ins, and
pages that fetch nothing from elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

import requests

from tests.functional.api_stack import api_stack


def test_sign_in_session_and_csrf(tmp_path: Path) -> None:
    with api_stack(tmp_path) as stack:
        board = stack.url + "/dashboard"
        refused = requests.post(board + "/login", data={"username": "reader",
                                                        "password": "wrong"},
                                allow_redirects=False, timeout=60)
        assert refused.status_code == 401 and "Set-Cookie" not in refused.headers
        assert "Keystone refused this username, password or project" in refused.text

        plain = requests.post(board + "/login", data={"username": "reader",
                                                      "password": "reader-secret"},
                              allow_redirects=False, timeout=60)
        assert plain.status_code == 302
        cookie = plain.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/dashboard" in cookie
        assert "Secure" not in cookie                        # plain HTTP: no Secure
        behind_tls = requests.post(board + "/login", headers={"X-Forwarded-Proto": "https"},
                                   data={"username": "reader", "password": "reader-secret"},
                                   allow_redirects=False, timeout=60)
        assert "Secure" in behind_tls.headers["Set-Cookie"]

        session = requests.Session()
        session.cookies.update(plain.cookies)
        page = session.get(board + f"/plans/{stack.plan_id}", timeout=60)
        assert page.status_code == 200
        assert plain.cookies["consolidator_session"] not in page.text
        # Everything the page loads comes from the dashboard itself.
        assert re.findall(r'(?:src|href)="(https?:|//)', page.text) == []
        for asset in re.findall(r'(?:src|href)="(/dashboard/static/[^"]+)"', page.text):
            assert session.get(stack.url + asset, timeout=60).status_code == 200
        assert "default-src 'self'" in page.headers["Content-Security-Policy"]

        # A POST without the form's CSRF token, with a wrong one, without a session, and with
        # a forged cookie: refused, the plan unchanged.
        action = board + f"/plans/{stack.plan_id}/approve"
        assert session.post(action, data={}, allow_redirects=False,
                            timeout=60).status_code == 403
        assert session.post(action, data={"csrf": "guess"}, allow_redirects=False,
                            timeout=60).status_code == 403
        assert requests.post(action, data={}, allow_redirects=False,
                             timeout=60).status_code == 401
        forged = requests.get(board + "/hosts", cookies={"consolidator_session": "gAAAA-x"},
                              allow_redirects=False, timeout=60)
        assert forged.status_code == 302 and "/dashboard/login" in forged.headers["Location"]
        assert "proposed" in stack.cli("plans", "list").out

        # Signing out ends the session in the browser.
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        out = session.post(board + "/logout", data={"csrf": csrf}, allow_redirects=False,
                           timeout=60)
        assert out.status_code == 302 and "consolidator_session=;" in out.headers["Set-Cookie"]
