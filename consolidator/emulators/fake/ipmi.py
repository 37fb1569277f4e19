"""IPMI for the fake cloud's emulated BMCs: one pyghmi BMC per host, on 127.0.0.1 over UDP.

pyghmi's server side (1.6.19) offers only cipher suite 3 but accepts any proposal, and ignores
an unknown user; its client then crashes (SHA-256) or loops for ever. These BMCs refuse what
they cannot serve, with the RMCP+ status codes a real BMC sends, so clients fail fast.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from typing import Any

from pyghmi.ipmi import bmc as pyghmi_bmc
from pyghmi.ipmi.private import constants, serversession
from pyghmi.ipmi.private import session as ipmisession

from consolidator.core.model import stable_uuid
from consolidator.emulators.fake.bmc_power import BmcPower
from consolidator.power import pyghmi_io

log = logging.getLogger(__name__)

#: RMCP+ status codes (IPMI 2.0, table 13-15).
NO_CIPHER_SUITE_MATCH = 0x11
UNAUTHORIZED_NAME = 0x0D
#: Completion code "node busy" (IPMI 2.0, table 5-2), sent under a bmc_busy fault.
NODE_BUSY = 0xC0
#: DCMI Get Power Reading (netfn 0x2C, command 0x02, group extension 0xDC).
DCMI_NETFN, DCMI_GET_POWER_READING, DCMI_GROUP = 0x2C, 0x02, 0xDC
INVALID_COMMAND = 0xC1
#: The RMCP+ payload type of an Open Session Request.
OPEN_SESSION_REQUEST = 0x10
#: The only algorithms pyghmi's server implements: RAKP-HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128.
SUPPORTED = {12: 1, 20: 1, 28: 1}


class _Credentials:
    """authdata for pyghmi: the password of a known user; a wrong one under bmc_auth_fails."""

    def __init__(self, power: BmcPower, host: str) -> None:
        self.power = power
        self.host = host

    def get(self, user: str, default: Any = None) -> str | None:
        """The password pyghmi keys the RAKP exchange with (None for an unknown user)."""
        if user != self.power.username:
            return default
        if self.power.auth_fails(self.host):
            return os.urandom(12).hex()
        return self.power.password


class _Session(serversession.ServerSession):
    """A server session that refuses unsupported ciphers and unknown users."""

    def create_open_session_response(self, request: bytearray) -> bytearray:
        """Accept only cipher suite 3; else status 0x11 so the client falls back to it."""
        if all(len(request) > i and request[i] == algo for i, algo in SUPPORTED.items()):
            return super().create_open_session_response(request)
        self.clientsessionid = request[4:8]
        return bytearray([request[0], NO_CIPHER_SUITE_MATCH, 0, 0]) + self.clientsessionid

    def _got_rakp1(self, data: Any) -> None:
        """Answer an unknown user with 'unauthorized name' instead of silence."""
        name = bytes(data[28:]).decode("utf-8", "replace") if len(data) > 28 else ""
        if data[27] and self.authdata.get(name) is not None:
            super()._got_rakp1(data)
            return
        payload = bytearray([data[0], UNAUTHORIZED_NAME, 0, 0]) + self.clientsessionid
        self.send_payload(payload, constants.payload_types["rakp2"], retry=False)

    def process_pktqueue(self) -> None:
        """Handle this session's packets; drop every packet while the BMC is unreachable.

        pyghmi's own routing here breaks when one client talks to several BMCs at once: a
        new login to one BMC forgets that client's sessions with every BMC, and a packet
        already queued for one of those then raises (ServerSession has no sessionless_data),
        which ended the thread serving every BMC. Here a packet goes to the session the
        table holds for its client and this BMC, or else to the BMC itself.
        """
        while self.pktqueue:
            pkt = self.pktqueue.popleft()
            if self.bmc.fake_power.unreachable(self.bmc.host_name):
                continue
            data = bytearray(pkt[0])
            if not (len(data) > 5 and data[0] == 6 and data[2:4] == b"\xff\x07"):
                continue
            current = _sessions(pkt[1]).get(self.bmc.port)
            if current is not self:
                (current or self.bmc).pktqueue.append(pkt)
                (current or self.bmc).process_pktqueue()
            elif _starts_over(data, established=bool(self.sessionid)):
                self.close_server_session()  # the client logs in again: a new conversation
                self.bmc.sessionless_data(data, pkt[1])
            else:
                self._handle_ipmi_packet(data, sockaddr=pkt[1], qent=pkt)

    def close_server_session(self) -> None:
        """Forget this session (Close Session, or its client starting over). Only its own
        entry goes: the client's entry stays (maybe empty), since pyghmi's I/O thread reads
        it without a lock."""
        sessions = _sessions(self.sockaddr)
        if sessions.get(self.bmc.port) is self:
            del sessions[self.bmc.port]


def _sessions(clientaddr: Any) -> dict[int, Any]:
    """The server sessions of one client address, by BMC port (empty if none)."""
    return ipmisession.Session.bmc_handlers.get(clientaddr) or {}


def _starts_over(data: bytearray, *, established: bool) -> bool:
    """A packet that begins a client's login: IPMI 1.5 framing with sequence number and
    session id 0 (Get Channel Authentication Capabilities), or an RMCP+ Open Session
    Request once the session is established (before, it is the client's cipher fallback)."""
    if data[4] == 6:
        return established and data[5] & 0x3F == OPEN_SESSION_REQUEST
    return data[4] in (0, 2) and len(data) >= 13 and not any(data[5:13])


class FakeIpmiBmc(pyghmi_bmc.Bmc):
    """One host's BMC; chassis power drives the fake host."""

    def __init__(self, power: BmcPower, host: str, address: str = "127.0.0.1") -> None:
        self.fake_power = power
        self.host_name = host
        super().__init__(_Credentials(power, host), port=0,
                         bmcuuid=uuid.UUID(stable_uuid("bmc", host)), address=address)
        # Bound to an ephemeral port: sessions route by the real one.
        self.port = self.serversocket.getsockname()[1]

    def sessionless_data(self, data: Any, sockaddr: Any) -> None:
        """Drop packets while unreachable, and logins under bmc_drops_logins; open RMCP+
        sessions with _Session."""
        if self.fake_power.unreachable(self.host_name):
            return
        raw = bytearray(data)
        if (len(raw) > 5 and _starts_over(raw, established=False)
                and self.fake_power.drops_login(self.host_name)):
            return  # a login request left unanswered, as by a BMC under load
        if (len(raw) >= 22 and raw[0] == 6 and raw[2:4] == b"\xff\x07" and raw[4] == 6
                and raw[5] == 16):
            _Session(self.authdata, self.kg, sockaddr, self.serversocket, raw[16:],
                     self.uuid, bmc=self)
            return
        super().sessionless_data(data, sockaddr)

    def get_chassis_status(self, session: Any) -> None:
        """Chassis status (the power read); 'node busy' while a bmc_busy fault has shots."""
        if self.fake_power.busy(self.host_name):
            session.send_ipmi_response(code=NODE_BUSY)
            return
        super().get_chassis_status(session)

    def handle_raw_request(self, request: Any, session: Any) -> None:
        """DCMI Get Power Reading here; everything else as pyghmi's BMC does."""
        if request["netfn"] == DCMI_NETFN and request["command"] == DCMI_GET_POWER_READING:
            self.get_power_reading(session)
            return
        super().handle_raw_request(request, session)

    def get_power_reading(self, session: Any) -> None:
        """Current, min, max and average watts (all the emulated draw), a timestamp, a 1 s
        period and the state byte: measurement active only while the host is on. A host
        under bmc_no_power_reading answers 'invalid command', as a BMC without DCMI."""
        if self.fake_power.faults.bmc_fault("bmc_no_power_reading", self.host_name):
            session.send_ipmi_response(code=INVALID_COMMAND)
            return
        watts = self.fake_power.watts(self.host_name)
        value = int(round(watts or 0)).to_bytes(2, "little")
        data = (bytes([DCMI_GROUP]) + value * 4 + int(time.time()).to_bytes(4, "little")
                + (1000).to_bytes(4, "little") + bytes([0x40 if watts is not None else 0]))
        session.send_ipmi_response(data=list(data))

    def get_power_state(self) -> str:
        """'on' or 'off'."""
        return self.fake_power.power(self.host_name)

    def get_system_guid(self) -> uuid.UUID:
        """The host's own system GUID (Get System GUID): distinct per host."""
        return uuid.UUID(self.fake_power.identity(self.host_name)["guid"])

    def power_off(self) -> None:
        """Chassis off: immediate."""
        self.fake_power.force_off(self.host_name)

    def power_on(self) -> None:
        """Chassis on."""
        self.fake_power.on(self.host_name)

    def power_reset(self) -> None:
        """Chassis hard reset."""
        self.fake_power.restart(self.host_name)

    def power_cycle(self) -> None:
        """Chassis power cycle."""
        self.fake_power.restart(self.host_name)

    def power_shutdown(self) -> None:
        """Soft off (ACPI): off after the graceful delay."""
        self.fake_power.graceful_off(self.host_name)

    def close(self) -> None:
        """Stop listening (best effort: pyghmi has no server shutdown)."""
        ipmisession.Session.bmc_handlers.pop(self.serversocket, None)
        with contextlib.suppress(ValueError):
            ipmisession.iosockets.remove(self.serversocket)
        # Wake pyghmi's I/O thread out of select() so it forgets the socket before it closes.
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET,
                                                         socket.SOCK_DGRAM) as waker:
            waker.sendto(b"\x01", self.serversocket.getsockname()[:2])
        time.sleep(0.05)
        with contextlib.suppress(OSError):
            self.serversocket.close()


class IpmiBmcs:
    """The emulated IPMI BMCs of a fake cloud and the thread that serves them."""

    def __init__(self, power: BmcPower, hosts: list[str]) -> None:
        # A send from a serving thread could block pyghmi's read of one BMC's socket, and
        # then no BMC answered until that one got a packet.
        pyghmi_io.install()
        if not ipmisession.iosockets:
            # pyghmi wakes its I/O thread through iosockets[0]; were that an IPv4 BMC
            # socket, the wake-up (sent to ::ffff:127.0.0.1) would fail and every answer
            # would wait for select() to time out. Give it a dual-stack socket first.
            ipmisession.Session._assignsocket()
        self.bmcs = {host: FakeIpmiBmc(power, host) for host in hosts}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def ports(self) -> dict[str, int]:
        """host -> UDP port on 127.0.0.1."""
        return {host: bmc.port for host, bmc in self.bmcs.items()}

    def start(self) -> None:
        """Serve every BMC from one pyghmi event-loop thread."""
        if self.bmcs and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="fake-ipmi",
                                            daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                ipmisession.Session.wait_for_rsp(timeout=0.2)
            except Exception:  # noqa: BLE001 - one bad packet must not silence every BMC
                log.exception("emulated IPMI BMCs: a packet failed (still serving)")

    def stop(self) -> None:
        """Stop the loop and close the sockets."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
        for bmc in self.bmcs.values():
            bmc.close()
