const y: any = 6;
const z = <number>
    y;
return z
