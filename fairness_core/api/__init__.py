"""What an evaluation is and how a run finds one: the contract every evaluation implements and the run calls.

* :mod:`.evaluation`: :class:`~.evaluation.Evaluation` and :class:`~.evaluation.MetricSpec`;
* :mod:`.discovery`: the ``fairness_core.evaluations`` entry-point group and its registry;
* :mod:`.prompts`, :mod:`.answers`, :mod:`.refusals`: what is asked, how an output is read as an answer,
  and the refusal metrics every evaluation of chat answers shares;
* :mod:`.options`: the view of the run's options that an evaluation receives;
* :mod:`.user_files`: the thresholds and attribute-set files read against the registered sections.

A third-party evaluation subclasses :class:`fairness_core.api.evaluation.Evaluation`
(docs/add-an-evaluation.md).  The modules are imported on use, not here: the
pytest plugin reads this package on every pytest run and must stay light.
"""
