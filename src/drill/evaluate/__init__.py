"""Evaluation: the policy × task × seed matrix, its tables, results.json and plots."""

from drill.evaluate.report import atomic_write_text, grouped_bar_chart, progress_bar, summary_table, write_results

__all__ = ["atomic_write_text", "grouped_bar_chart", "progress_bar", "summary_table", "write_results"]
