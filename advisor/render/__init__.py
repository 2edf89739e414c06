"""Rendering of the results: text (``text``), code (``code``), and pictures (matplotlib, drawn on
``matplotlib.figure.Figure`` objects: no pyplot, so a notebook's backend is never switched): the access map
(``accessmap``) and the cost chart (``costchart``). matplotlib is the ``plots`` extra: the picture modules
(through ``common``) raise ``advisor.extras.MissingExtra`` naming it when it is missing (the HTML report then
notes it in place of a picture); text and code need nothing beyond the core install."""
