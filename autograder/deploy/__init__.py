"""Deployment targets' own code: what GitHub Actions (ghactions) and nbgrader (nbgrader_plugins,
nbgrader_exchange) call into; the commands live in autograder/commands."""
