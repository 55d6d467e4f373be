// A loopback HTTP server for the browser test: serves folders under URL prefixes on 127.0.0.1 at a
// port the system picks, so parallel test runs never collide and nothing outside this machine can
// reach it. sirv does the file serving (content types, no escaping a folder through "..").
import http from 'node:http'
import sirv from 'sirv'

// Serves each folder of `folders` ({'/prefix/': '/abs/folder'}) and resolves once listening, to
// {url, close()}. The longest matching prefix wins; close() ends open connections too, so the test
// process never waits on a browser's keep-alive socket.
export async function serveFolders(folders) {
  const routes = Object.entries(folders)
    .sort(([a], [b]) => b.length - a.length)
    .map(([prefix, folder]) => ({prefix, handle: sirv(folder, {dev: true})}))
  const server = http.createServer((request, response) => {
    const route = routes.find(({prefix}) => request.url.startsWith(prefix))
    if (!route) {
      response.writeHead(404).end()
      return
    }
    request.url = '/' + request.url.slice(route.prefix.length)
    route.handle(request, response, () => response.writeHead(404).end())
  })
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise(resolve => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
