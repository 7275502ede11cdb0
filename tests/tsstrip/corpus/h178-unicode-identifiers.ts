const café: number = 1; const π: number = 3.14; return café + π
