"""Reading back the series a --plot picture carries (render/plot.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from consolidator.render.plot import SERIES_KEY


def embedded_series(path: Path) -> Any:
    """The series in an .svg's dc:description, a .png's text chunk or an .html's script."""
    if path.suffix == ".svg":
        root = ET.parse(path).getroot()
        found = root.find(".//{http://purl.org/dc/elements/1.1/}description")
        assert found is not None and root.tag.endswith("svg")
        return json.loads(found.text or "")
    if path.suffix == ".png":
        from PIL import Image

        with Image.open(path) as image:
            assert image.width > 300 and image.height > 300
            return json.loads(image.text[SERIES_KEY])
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text
    start = text.index(f'id="{SERIES_KEY}">') + len(f'id="{SERIES_KEY}">')
    return json.loads(text[start:text.index("</script>", start)].replace("<\\/", "</"))
