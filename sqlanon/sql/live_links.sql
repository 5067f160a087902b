-- Every chain link of domain $1: old incarnation (a ghost) -> the next one.
SELECT earlier, later FROM sqlanon.links WHERE domain = $1
