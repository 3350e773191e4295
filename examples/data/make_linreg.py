#!/usr/bin/python3
"""Writes linreg_x.npy and linreg_y.npy: 100 samples of y = 2x + 1 + noise,
x uniform in [0, 1), noise N(0, 0.05^2); seeded, so the files are fixed."""
import os

import numpy as np

rng = np.random.default_rng(42)
x = rng.random((100, 1), dtype=np.float32)
y = (2 * x + 1 + rng.normal(0, 0.05, (100, 1))).astype(np.float32)
here = os.path.dirname(os.path.abspath(__file__))
np.save(os.path.join(here, "linreg_x.npy"), x)
np.save(os.path.join(here, "linreg_y.npy"), y)
