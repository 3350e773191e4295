#!/usr/bin/python3
"""Writes blobs_x.npy ([256, 2] float32) and blobs_onehot.npy ([256, 4]):
four Gaussian blobs (std 1.0) around (+-2, +-2), 64 points each, shuffled;
seeded, so the files are fixed."""
import os

import numpy as np

rng = np.random.default_rng(7)
centers = np.array([[2, 2], [-2, 2], [-2, -2], [2, -2]], np.float32)
labels = rng.permutation(np.repeat(np.arange(4), 64))
x = (centers[labels] + rng.normal(0, 1.0, (256, 2))).astype(np.float32)
onehot = np.eye(4, dtype=np.float32)[labels]
here = os.path.dirname(os.path.abspath(__file__))
np.save(os.path.join(here, "blobs_x.npy"), x)
np.save(os.path.join(here, "blobs_onehot.npy"), onehot)
