// pbwatchfan: ../shared/tools/watchfan with the watches in kube's protobuf (stdlib only, loopback only).
// Opens -watchers watch streams on -url with `Accept: -accept` (default application/vnd.kubernetes.protobuf),
// reads kube's length-delimited frames (4-byte big-endian length, then a WatchEvent), POSTs -events JSON
// objects at -rate per second and measures, per watcher and event, the time from the POST being sent to
// the ADDED event arriving. Prints watchfan's summary line, so the benchmark parses both alike.
// The frames are read with a minimal wire-format reader (a load tool built with no module downloads
// cannot import the protobuf runtime); it reads only the event type and the object's metadata.name.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

var magic = []byte("k8s\x00")

// field returns the bytes of the first length-delimited field `num` of a protobuf message, skipping
// varint and fixed fields, or nil when the message has none.
func field(msg []byte, num uint64) []byte {
	for len(msg) > 0 {
		tag, n := binary.Uvarint(msg)
		if n <= 0 {
			return nil
		}
		msg = msg[n:]
		switch tag & 7 {
		case 0:
			_, m := binary.Uvarint(msg)
			if m <= 0 {
				return nil
			}
			msg = msg[m:]
		case 1:
			msg = msg[min(8, len(msg)):]
		case 5:
			msg = msg[min(4, len(msg)):]
		case 2:
			size, m := binary.Uvarint(msg)
			if m <= 0 || uint64(len(msg)-m) < size {
				return nil
			}
			body := msg[m : m+int(size)]
			if tag>>3 == num {
				return body
			}
			msg = msg[m+int(size):]
		default:
			return nil
		}
	}
	return nil
}

// unwrap strips kube's envelope (magic + runtime.Unknown) and returns the object's own message.
func unwrap(data []byte) []byte {
	if bytes.HasPrefix(data, magic) {
		return field(data[len(magic):], 2) // Unknown.raw
	}
	return data
}

// nextEvent reads one frame: the WatchEvent's type and its object's metadata.name.
func nextEvent(r io.Reader) (string, string, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return "", "", err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return "", "", errors.New("frame too large")
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		return "", "", err
	}
	ev := unwrap(frame)
	object := unwrap(field(field(ev, 2), 1)) // WatchEvent.object (RawExtension).raw
	name := field(field(object, 1), 1)       // .metadata.name
	return string(field(ev, 1)), string(name), nil
}

func main() {
	target := flag.String("url", "", "collection URL (loopback only)")
	body := flag.String("body", "", "object to POST; {{n}} becomes the object's unique suffix")
	watchers := flag.Int("watchers", 1000, "watch streams")
	events := flag.Int("events", 100, "objects to create")
	rate := flag.Float64("rate", 50, "creates per second")
	cert := flag.String("cert", "", "client cert")
	key := flag.String("key", "", "client key")
	cacert := flag.String("cacert", "", "CA bundle")
	maxDur := flag.Duration("max", 90*time.Second, "hard time bound")
	accept := flag.String("accept", "application/vnd.kubernetes.protobuf", "Accept header of the watches")
	flag.Parse()

	u, err := url.Parse(*target)
	if err != nil {
		panic(err)
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" && h != "::1" {
		fmt.Fprintln(os.Stderr, "refusing non-loopback target", h)
		os.Exit(2)
	}
	tlsCfg := &tls.Config{}
	if *cert != "" {
		kp, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			panic(err)
		}
		tlsCfg.Certificates = []tls.Certificate{kp}
	}
	if *cacert != "" {
		pool := x509.NewCertPool()
		pem, err := os.ReadFile(*cacert)
		if err != nil {
			panic(err)
		}
		pool.AppendCertsFromPEM(pem)
		tlsCfg.RootCAs = pool
	} else {
		tlsCfg.InsecureSkipVerify = true
	}
	tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: false, MaxIdleConnsPerHost: 16}
	client := &http.Client{Transport: tr}
	deadline := time.Now().Add(*maxDur)
	stamp := time.Now().UnixNano() % 1000000

	// current resourceVersion of the (empty or not) collection, so watches start at "now"
	lr, err := client.Get(*target + "?limit=1")
	if err != nil {
		panic(err)
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	json.NewDecoder(lr.Body).Decode(&list)
	lr.Body.Close()

	var mu sync.Mutex
	sent := map[string]time.Time{}
	recv := make([]map[string]time.Time, *watchers)
	var ready, done sync.WaitGroup
	failed := 0
	for w := 0; w < *watchers; w++ {
		recv[w] = map[string]time.Time{}
		ready.Add(1)
		done.Add(1)
		go func(w int) {
			defer done.Done()
			wt := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: false}
			wc := &http.Client{Transport: wt}
			q := fmt.Sprintf("%s?watch=1&resourceVersion=%s&timeoutSeconds=%d", *target, list.Metadata.ResourceVersion, int(maxDur.Seconds()))
			req, err := http.NewRequest("GET", q, nil)
			if err != nil {
				panic(err)
			}
			req.Header.Set("Accept", *accept)
			resp, err := wc.Do(req)
			if err != nil || resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "stream=watch") {
				mu.Lock()
				failed++
				mu.Unlock()
				ready.Done()
				return
			}
			ready.Done()
			defer resp.Body.Close()
			seen := 0
			for seen < *events && time.Now().Before(deadline) {
				kind, name, err := nextEvent(resp.Body)
				if err != nil {
					return
				}
				if kind != "ADDED" {
					continue
				}
				t := time.Now()
				recv[w][name] = t
				seen++
			}
		}(w)
	}
	ready.Wait()
	time.Sleep(500 * time.Millisecond) // let the server register every watcher
	names := make([]string, 0, *events)
	interval := time.Duration(float64(time.Second) / *rate)
	writeErrs := 0
	for i := 0; i < *events && time.Now().Before(deadline); i++ {
		suffix := fmt.Sprintf("%d-%d", stamp, i)
		b := strings.ReplaceAll(*body, "{{n}}", suffix)
		var obj struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		json.Unmarshal([]byte(b), &obj)
		t0 := time.Now()
		mu.Lock()
		sent[obj.Metadata.Name] = t0
		mu.Unlock()
		names = append(names, obj.Metadata.Name)
		resp, err := client.Post(*target, "application/json", bytes.NewBufferString(b))
		if err != nil || resp.StatusCode != 201 {
			writeErrs++
		}
		if resp != nil {
			resp.Body.Close()
		}
		if sl := interval - time.Since(t0); sl > 0 {
			time.Sleep(sl)
		}
	}
	waitDone := make(chan struct{})
	go func() { done.Wait(); close(waitDone) }()
	select {
	case <-waitDone:
	case <-time.After(time.Until(deadline)):
	}
	mu.Lock()
	defer mu.Unlock()
	lat := []time.Duration{}
	missing := 0
	for w := 0; w < *watchers; w++ {
		for _, n := range names {
			if t, ok := recv[w][n]; ok {
				lat = append(lat, t.Sub(sent[n]))
			} else {
				missing++
			}
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(q float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[int(float64(len(lat)-1)*q)].Round(100 * time.Microsecond)
	}
	fmt.Printf("watchfan watchers=%d events=%d deliveries=%d p50=%v p90=%v p99=%v max=%v missing=%d watch_failed=%d write_errors=%d\n",
		*watchers, len(names), len(lat), p(0.5), p(0.9), p(0.99), p(1), missing, failed, writeErrs)
}
