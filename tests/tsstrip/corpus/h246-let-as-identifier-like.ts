let let_ = 1; var of = 2; return let_ + of
