-- The oldest version of family $1 its owner still serves (NULL: every version).
SELECT max(served_from) FROM sqlanon.retirements WHERE family = $1
