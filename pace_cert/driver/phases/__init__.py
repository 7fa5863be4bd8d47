"""The steps of the plans (``pace_cert/driver/plans.py``), one module each."""
