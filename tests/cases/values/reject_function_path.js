// a function deep inside fails and the message names its path
return { items: [1, 2, 3, { fn() {} }] };
