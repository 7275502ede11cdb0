let x: /* a comment <T> */ number = 1; // trailing: string
return x
