const name: string = "x";
return <b>{name}</b>;
