"""Pictures (matplotlib, drawn on ``matplotlib.figure.Figure`` objects: no pyplot, so a notebook's backend is
never switched): the access map (``accessmap``) and the cost chart (``costchart``). matplotlib is imported when
a picture is drawn, not with the package."""
