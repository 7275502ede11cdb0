function f(n) {
  return f(n + 1) + 1;
}
return f(0);
