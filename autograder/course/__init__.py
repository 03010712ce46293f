"""Course records: a class's grades over time (gradebook, lateness, regrades, the LMS export,
Gradescope's submission limits); none takes part in computing a grade."""
