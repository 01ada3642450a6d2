"""What every report plot shares: matplotlib without a display, one palette, figures as base64 PNG.

Each evaluation draws its own plots (``Evaluation.plots``) from the results file
alone, so that a pytest-xdist controller, which never generated anything, can
draw them.  Labels are ASCII only (template ids, group ids), so the plots
render the same on any machine without a Japanese font; the Japanese text lives
in the HTML around them, which the browser renders.

>>> figure, axes = pyplot().subplots()
>>> png(figure)[:8]
'iVBORw0K'
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend first)

#: One colour per group, in the attribute set's order (ten distinct hues, then they repeat).
PALETTE = [plt.get_cmap("tab10")(i) for i in range(10)]


def pyplot():
    """``matplotlib.pyplot`` on the display-less Agg backend."""
    return plt


def png(figure) -> str:
    """``figure`` as a base64 PNG, closed afterwards (a report draws many)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
