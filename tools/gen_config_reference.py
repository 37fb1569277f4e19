"""Write docs/configuration.rst from the option schema in consolidator/app/config.py."""

from pathlib import Path

from consolidator.app.config_reference import reference_rst

if __name__ == "__main__":
    target = Path(__file__).resolve().parents[1] / "docs" / "configuration.rst"
    target.write_text(reference_rst())
    print(f"wrote {target}")
