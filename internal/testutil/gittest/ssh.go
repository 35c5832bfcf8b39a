package gittest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// sshServer serves git-upload-pack and git-receive-pack over SSH on one
// listener until close.
type sshServer struct {
	s      *Server
	ln     net.Listener
	ctx    context.Context // canceled by close; kills running git processes
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup // the accept loop and connection handlers
}

func newSSHServer(s *Server, ln net.Listener) *sshServer {
	ctx, cancel := context.WithCancel(context.Background())
	srv := &sshServer{s: s, ln: ln, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
	srv.wg.Add(1)
	go srv.accept()
	return srv
}

// close stops the listener, closes all connections and waits for their
// handlers to finish.
func (srv *sshServer) close() {
	srv.mu.Lock()
	srv.closed = true
	srv.ln.Close()
	for c := range srv.conns {
		c.Close()
	}
	srv.mu.Unlock()
	srv.cancel()
	srv.wg.Wait()
}

func (srv *sshServer) accept() {
	defer srv.wg.Done()
	for {
		c, err := srv.ln.Accept()
		if err != nil {
			return // listener closed
		}
		srv.mu.Lock()
		if srv.closed {
			srv.mu.Unlock()
			c.Close()
			return
		}
		srv.conns[c] = struct{}{}
		srv.wg.Add(1)
		srv.mu.Unlock()
		go func() {
			defer srv.wg.Done()
			srv.serveConn(c)
			srv.mu.Lock()
			delete(srv.conns, c)
			srv.mu.Unlock()
		}()
	}
}

func (srv *sshServer) serveConn(c net.Conn) {
	defer c.Close()
	conn, chans, reqs, err := ssh.NewServerConn(c, srv.s.sshConfig)
	if err != nil {
		return // handshake or authentication failed
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	var sessions sync.WaitGroup
	defer sessions.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only session channels are supported")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		sessions.Add(1)
		go func() {
			defer sessions.Done()
			srv.serveSession(ch, chReqs)
		}()
	}
}

// serveSession handles one session channel: an optional GIT_PROTOCOL env
// request, then one exec request running git-upload-pack or
// git-receive-pack.
func (srv *sshServer) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var env []string
	for req := range reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			ok := ssh.Unmarshal(req.Payload, &kv) == nil && kv.Name == "GIT_PROTOCOL"
			if ok {
				env = append(env, "GIT_PROTOCOL="+kv.Value)
			}
			_ = req.Reply(ok, nil)
		case "exec":
			var payload struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
				_ = req.Reply(false, nil)
				return
			}
			service, dir, repo, err := srv.parseCommand(payload.Command)
			if err != nil {
				fmt.Fprintf(ch.Stderr(), "gittest: %v\n", err)
				_ = req.Reply(false, nil)
				return
			}
			_ = req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			status := srv.runGit(ch, service, dir, repo, env)
			_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
			return
		default: // pty-req, shell, subsystem, ...
			_ = req.Reply(false, nil)
		}
	}
}

// parseCommand parses "git-upload-pack '/name.git'" into the git
// subcommand, the repository directory and the repository name.
func (srv *sshServer) parseCommand(command string) (service, dir, repo string, err error) {
	verb, arg, _ := strings.Cut(strings.TrimSpace(command), " ")
	switch verb {
	case "git-upload-pack", "git-receive-pack":
		service = strings.TrimPrefix(verb, "git-")
	default:
		return "", "", "", fmt.Errorf("unsupported command %q", command)
	}
	rel := strings.TrimPrefix(strings.Trim(strings.TrimSpace(arg), `'"`), "/")
	if !filepath.IsLocal(rel) || strings.Contains(rel, "..") {
		return "", "", "", fmt.Errorf("invalid repository path %q", arg)
	}
	dir = filepath.Join(srv.s.root, rel)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", "", "", fmt.Errorf("repository %q not found", arg)
	}
	return service, dir, repoName(filepath.ToSlash(rel)), nil
}

// runGit runs git <service> on dir with the channel as stdin/stdout/stderr
// and returns its exit status.
func (srv *sshServer) runGit(ch ssh.Channel, service, dir, repo string, env []string) uint32 {
	cmd := exec.CommandContext(srv.ctx, srv.s.git, service, dir)
	cmd.Env = append(srv.s.env(), env...)
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	// A pipe we feed ourselves, so that Wait does not wait for the client
	// to close its side of the channel.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "gittest: %v\n", err)
		return 1
	}
	var in io.Reader = ch
	if service == "upload-pack" {
		srv.s.count(repo, func(c *Counts) { c.RefListings++ })
		in = io.TeeReader(ch, &wantDetector{onWant: func() {
			srv.s.count(repo, func(c *Counts) { c.Fetches++ })
		}})
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ch.Stderr(), "gittest: start git %s: %v\n", service, err)
		return 1
	}
	go func() {
		_, _ = io.Copy(stdin, in)
		stdin.Close()
	}()
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return uint32(exit.ExitCode())
		}
		return 255
	}
	return 0
}
