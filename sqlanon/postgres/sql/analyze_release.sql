-- A release's new tables get planner statistics before analysts read them: without,
-- PostgreSQL guessed the interval queries' joins of a fresh table thousands of times
-- too large and compiled them with JIT (15 s where 30 ms do). Autovacuum would come
-- later; ANALYZE samples a fixed number of rows, so it costs little at any size.
ANALYZE {relations}
