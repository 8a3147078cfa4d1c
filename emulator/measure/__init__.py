"""What a run measured, made readable: results.json assembled and checked
against its invariants (:mod:`.results`), per-collective figures
(:mod:`.collective_metrics`), per-job figures and timelines
(:mod:`.job_metrics`, :mod:`.job_timeline`), the printed summary (:mod:`.summary`), the
CSVs of links and time series (:mod:`.links`, :mod:`.run_series`), plots
(:mod:`.plots`, :mod:`.congestion_plots`, :mod:`.utilisation_plot`), the
spans a live run fell behind (:mod:`.behind`), reading captures
(:mod:`.inspect`) and ``aifabric report`` (:mod:`.report`).
"""
