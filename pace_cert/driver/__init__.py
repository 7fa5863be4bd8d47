"""The PACE driver (paper Figure 1): run state, the faithful loop, phases and plans."""
