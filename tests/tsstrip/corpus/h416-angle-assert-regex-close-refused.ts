// @refuse: JSX
const a: any = 1; return a </b/
