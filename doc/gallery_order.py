"""The order of the gallery examples (a picklable sort key for sphinx-gallery)."""

from pathlib import Path

ORDER = [
    "plot_regression_uncertainty.py",
    "plot_two_moons_stream.py",
    "plot_drift_tracking.py",
    "plot_grid_search.py",
    "plot_rules_families.py",
    "plot_thompson_bandit.py",
    "plot_calibration.py",
    "plot_streaming_pipeline.py",
    "plot_online_vs_batch.py",
]


class ExampleOrder:
    """Sort key: the examples of :data:`ORDER` first, in that order, then the rest by name."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        name = Path(filename).name
        return (ORDER.index(name) if name in ORDER else len(ORDER), name)

    def __repr__(self):
        return "ExampleOrder"
