"""JOB3: a real MindSpore 0.5 training dump of an Ascend910 (generation 2, the
``profiler_default_tag`` layout) that several real-data test files read."""

JOB3 = "mindspore-ai+mindinsight/tests/utils/resource/JOB3"
