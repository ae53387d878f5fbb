# port.sh - sourced by the test and bench scripts.  free_port prints a TCP
# port on 127.0.0.1 that nothing answers on, picked at random from 20000 up
# to the kernel's ephemeral range: client sockets take their local ports
# from that range, and a server cannot bind a port a client socket holds.
free_port() {
  local lo=32768 p tries=0
  read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
  [ "$lo" -gt 21000 ] || lo=30000
  while [ $tries -lt 100 ]; do
    tries=$((tries + 1))
    p=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (lo - 20000) ))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
  done
  return 1
}
