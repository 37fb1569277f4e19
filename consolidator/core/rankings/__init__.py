"""Host rankings: which feasible host an instance goes to, listed by name in ``catalog``.

The baselines of paper 000 (pack, spread, their distance forms, xbalance) are in
``baseline``, ABP (000) in ``abp`` and BF-UCaC (003) in ``ucac``. A ranking is made from its
options by the factory the catalog lists under its name; no ranking module imports the catalog.
"""
