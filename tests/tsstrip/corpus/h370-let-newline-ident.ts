var let_ = 1; let
x = 2; return x
