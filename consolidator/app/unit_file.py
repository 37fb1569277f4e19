"""The systemd unit of the daemon: Type=notify with the watchdog, hardened (under 2.0 in
'systemd-analyze security'), the BMC file passed as a credential. The shipped unit
(consolidator/deploy/consolidator.service) is this text with ExecStart=consolidator (systemd
finds a bare name in /usr/local/bin, /usr/bin...); 'consolidator config unit' prints it with
the absolute path of the install that runs it, for a virtual environment."""

from __future__ import annotations

import sys
from pathlib import Path

UNIT = """\
# systemd unit for the consolidator daemon. Install:
#   consolidator config unit > /etc/systemd/system/consolidator.service   (this install's path)
#   systemctl daemon-reload && systemctl enable --now consolidator
# The shipped copy runs 'consolidator' from systemd's search path (/usr/local/bin, /usr/bin);
# for a virtual environment, print the unit with 'consolidator config unit', or override
# ExecStart= in a drop-in ('systemctl edit consolidator': an empty ExecStart= line, then
# ExecStart=/opt/consolidator/bin/consolidator --config ... daemon).
# The daemon reads /etc/consolidator/consolidator.conf (mode 0600 if it holds a secret or a
# database password), clouds.yaml (OS_CLOUD below or [cloud] name) and bmc.yaml, which
# systemd passes as a credential: root may own it, mode 0600. SQLite lives in
# /var/lib/consolidator (StateDirectory=); two hosts running this unit against one
# PostgreSQL database ([database] url) give high availability: one active, one standby.
# 'journalctl -u consolidator -p warning' shows the warnings and errors only.
[Unit]
Description=consolidator: pack OpenStack instances and power off idle compute hosts
Documentation=https://consolidator.readthedocs.io/en/latest/operator-guide.html
Wants=network-online.target
After=network-online.target

[Service]
# READY=1 once the scheduler runs; WATCHDOG=1 while the running cycle shows progress
# ([daemon] hang_timeout): a hung daemon is killed after WatchdogSec= and restarted.
Type=notify
NotifyAccess=main
WatchdogSec=120
User=consolidator
Group=consolidator
Environment=OS_CLIENT_CONFIG_FILE=/etc/consolidator/clouds.yaml
# Environment=OS_CLOUD=production
# The default SQLite database: /var/lib/consolidator/consolidator.db.
Environment=XDG_DATA_HOME=/var/lib
ExecStart={exec_start} --config /etc/consolidator/consolidator.conf daemon
LoadCredential=bmc.yaml:/etc/consolidator/bmc.yaml
# SIGTERM starts nothing new and lets running migrations finish or time out (journaled).
KillSignal=SIGTERM
TimeoutStopSec=1900
Restart=on-failure
RestartSec=30
StateDirectory=consolidator
StateDirectoryMode=0700
ConfigurationDirectory=consolidator
UMask=0077
# Hardening: 'systemd-analyze security consolidator' scores it about 1.1 (OK).
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
PrivateMounts=yes
DevicePolicy=closed
PrivateUsers=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
ProcSubset=pid
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
RestrictSUIDSGID=yes
RestrictNamespaces=yes
RestrictRealtime=yes
# Nova, Placement, PostgreSQL, Prometheus and the BMCs (IPMI, Redfish) are reached over IP.
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
LockPersonality=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
KeyringMode=private
RemoveIPC=yes

[Install]
WantedBy=multi-user.target
"""

#: The shipped unit's ExecStart command: found on systemd's own search path.
SEARCH_PATH_COMMAND = "consolidator"


def unit_text(command: str = SEARCH_PATH_COMMAND) -> str:
    """The unit, running `command` (a bare name, or an absolute path and arguments)."""
    return UNIT.replace("{exec_start}", command)


def this_install() -> str:
    """The command that runs this install: its console script when it was started by it,
    else this interpreter with -m consolidator (absolute paths both)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "consolidator" and script.is_file():
        return str(script.absolute())
    return f"{Path(sys.executable).absolute()} -m consolidator"
