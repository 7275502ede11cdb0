// @refuse: enum
// @transform
enum Q { "a-b" = 1, c }
return [Q["a-b"], Q.c]
