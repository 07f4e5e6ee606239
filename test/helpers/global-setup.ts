// Runs once before the suite: prepares what every test file shares.
export default async function setup(): Promise<void> {}
