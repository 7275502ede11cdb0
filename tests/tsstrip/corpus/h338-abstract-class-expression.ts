const A = abstract_ => 1; return A(0)
