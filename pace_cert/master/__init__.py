"""The master problems on HiGHS (and gurobipy when installed): L1 LP, max-margin LP,
L0 big-M MILP, L0 cover."""
