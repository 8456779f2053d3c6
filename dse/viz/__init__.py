"""Figures: study plots (fronts, knees, parallel coordinates) and sweep plots."""
