"""The pure runtime: declarations compiled to a Plan, entity tables, dataflow, the scheduler
and the outcome codes. No Ray, no clock, no threads, no I/O: executors drive it."""
