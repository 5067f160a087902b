-- The releases an export's catalog lists: what its tables may be (sqlanon.state.exports).
SELECT table_name, model, family FROM {db}.sqlanon.releases
