"""The report's experiments: training runs, the README's tables, the report's builders, doc/ figures."""
