let as = 5; return as
