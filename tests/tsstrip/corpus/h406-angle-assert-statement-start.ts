let n: any = [3, 1, 2];
<number[]>n.sort();
return n
