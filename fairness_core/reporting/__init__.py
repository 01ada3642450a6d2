"""What a reviewer reads: audit violations, the results file (``--audit-json``), the terminal summary and the HTML report."""
