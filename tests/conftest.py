import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ttt", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=False
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ttt"))
