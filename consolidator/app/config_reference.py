"""The configuration reference (docs/configuration.rst), generated from the option schema in
app/config.py (and app/service_options.py)."""

from __future__ import annotations

from consolidator.app.config import OPTIONS, declared_options


def reference_rst() -> str:
    """The configuration reference (docs/configuration.rst), generated from OPTIONS."""
    lines = ["=======================", "Configuration reference", "=======================", "",
             "The INI file named by ``--config`` (default ``/etc/consolidator/consolidator.conf``"
             " when it exists). Unknown sections and options are errors, so a typo cannot pass "
             "silently, and every value is checked when the file is loaded, whatever the "
             "command: its type, its range, its choices, the time zone, the address, the cron "
             "expression of [daemon] schedule and the [planner] algorithm and ranking names. "
             "This page is generated from ``consolidator/app/config.py`` by "
             "``python tools/gen_config_reference.py``; a test fails when they differ.", ""]
    for section in dict.fromkeys(o.section for o in OPTIONS):
        title = f"[{section}]"
        lines += [title, "=" * len(title), ""]
        for o in declared_options(section):
            default = o.default if o.default not in ("", None) else "(empty)"
            lines += [f"``{o.name}``", f"  *{o.type.__name__}*, default ``{default}``."
                      + (f" One of: {', '.join(o.choices)}." if o.choices else "")
                      + (f" In ``{o.range}``." if o.range else "")
                      + (f" Empty: {o.empty}." if o.empty else "")
                      + (" An IANA time zone." if o.form == "timezone" else "")
                      + (" An IP address or a host name." if o.form == "address" else ""),
                      f"  {o.help}", ""]
    return "\n".join(lines)
