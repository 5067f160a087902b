-- When a release was made: the one timestamp an export copies (sqlanon.state.exports).
SELECT created_at FROM sqlanon.releases WHERE family = $1 AND version = $2
