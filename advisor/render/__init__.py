"""Pictures (matplotlib, drawn on ``matplotlib.figure.Figure`` objects: no pyplot, so a notebook's backend is
never switched): the access map (``accessmap``) and the cost chart (``costchart``). matplotlib is imported when
a picture is drawn, not with the package; it is the ``plots`` extra, so importing the package without it
raises ``advisor.extras.MissingExtra`` naming the extra (the HTML report then notes it in place of a picture)."""
from advisor.extras import require

require("matplotlib", "drawing the access map and the cost chart")
