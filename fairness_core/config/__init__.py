"""What a run is configured by, validated before anything is generated: option values, thresholds, attribute sets.

Every user-written input (a thresholds file, an attribute-set file, an option
value, a path) is checked here and refused with one usage error that names the
value and what is allowed.
"""
